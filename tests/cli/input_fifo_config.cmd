# a FIFO named config.json fails at once instead of blocking in open()
cp -r "$FIX/ckpt/sharded" ck
rm ck/config.json
mkfifo ck/config.json
timeout 10 $HC validate ck

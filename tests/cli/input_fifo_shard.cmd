# a FIFO in place of a shard the index names fails at once instead of blocking in open()
cp -r "$FIX/ckpt/sharded" ck
rm ck/model-00002-of-00003.safetensors
mkfifo ck/model-00002-of-00003.safetensors
timeout 10 $HC inspect ck

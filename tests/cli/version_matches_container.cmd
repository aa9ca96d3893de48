# --version names the container format a converted file carries in its preamble (major and
# minor, u16 at bytes 8 and 10), read here from the file itself
$HC convert $FIX/ckpt/single out >/dev/null
maj=$(od -An -tu2 -j8 -N2 out/model.hconvert | tr -d ' ')
min=$(od -An -tu2 -j10 -N2 out/model.hconvert | tr -d ' ')
$HC --version | grep -qF "(container format $maj.$min)"
echo "format $maj.$min"

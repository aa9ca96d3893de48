# a sparse 1 GiB side file is copied sparsely: same length and bytes, few blocks on disk
cp -r "$FIX/ckpt/demo" src
truncate -s 1G src/big.json
printf head | dd of=src/big.json conv=notrunc 2>/dev/null
printf middle | dd of=src/big.json bs=1 seek=536870912 conv=notrunc 2>/dev/null
printf tail | dd of=src/big.json bs=1 seek=1073741820 conv=notrunc 2>/dev/null
$HC convert src out >/dev/null
stat -c '%s bytes' out/big.json
echo "few blocks: $(($(stat -c '%b * %B' out/big.json) <= 1048576))"
dd if=out/big.json bs=1 count=4 2>/dev/null; echo
dd if=out/big.json bs=1 skip=536870912 count=6 2>/dev/null; echo
dd if=out/big.json bs=1 skip=1073741820 count=4 2>/dev/null; echo
dd if=out/big.json bs=1 skip=4 count=16 2>/dev/null | od -An -tx1 | tr -s ' '

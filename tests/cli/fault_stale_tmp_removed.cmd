# temporary files a killed convert left (ours: exact pattern, regular files) go on the next
# run; look-alikes, folders and links of the same pattern stay
mkdir out out/rank0
: >out/.model.hconvert.tmp-Ab12Cd
: >out/.tokenizer.json.hconvert-tmp-Xy34Zw
: >out/rank0/.model.hconvert.hconvert-tmp-Qq11Ww
: >out/.model.hconvert.tmp-short
: >out/.model.hconvert.tmp-Ab12Cd7
: >out/.tokenizer.json.tmp-Qw12Er
: >out/keep.hconvert-tmp-123456
: >out/notes.txt
mkdir out/.dir.hconvert-tmp-Dd12Dd
ln -s notes.txt out/.link.hconvert-tmp-Ll12Ll
$HC convert $FIX/ckpt/demo out >/dev/null 2>err
grep -c 'removed 3 temporary files' err
LC_ALL=C ls -A out out/rank0

# folders an archive makes (named or only parents of its files) count against the limit
mkdir b && cd b
for i in 1 2 3 4 5 6 7 8; do p=d$i/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p; mkdir -p $p && : > $p/x.json; done
find . -type f | tar -cf ../bomb.tar --no-recursion -T -
cd ..
$HC inspect bomb.tar --max-extract-bytes 64K

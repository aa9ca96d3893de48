# a 9 KB zip holding 8 MiB: the default cap is 100 times the archive's size
$HC inspect "$FIX/archives/bomb.zip"

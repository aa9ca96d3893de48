$HC inspect $FIX/archives/sharded.zip --json

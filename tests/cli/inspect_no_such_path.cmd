$HC inspect $FIX/no/such/thing

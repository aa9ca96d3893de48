$HC validate $FIX/no/such

$HC frobnicate

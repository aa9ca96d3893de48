$HC convert --help

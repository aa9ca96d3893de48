$HC --help

$HC --version

$HC

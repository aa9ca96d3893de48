$HC verify $T/none

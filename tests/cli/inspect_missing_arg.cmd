$HC inspect

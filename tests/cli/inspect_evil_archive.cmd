$HC inspect $FIX/archives/evil_dotdot.tar

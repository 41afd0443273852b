"""A pre-tokenizer pattern that backtracks badly, and a text on which it does, for the budget tests.

``regex`` prunes some of the backtracking: on lines of n commas ``SLOW`` costs about n³, so 50
commas a line take milliseconds and 1,500 take over a minute of CPU a line. Tests that expect
a budget to run out use ``COMMAS``, whose cost is far above any budget they set.
"""

SLOW = r"(?:.*,){6}X|\s|\S"
COMMAS = ("a," * 1500 + "\n") * 10  # 30,010 characters

"""Guess the number: the interactive program of the spool acceptance tests (seeds/002 §8).

Asks once; `7` is right (exit 0), another number from 1 to 10 is wrong (exit 1), a number
outside 1..10 is out of range (exit 2), anything else is not a number (exit 3).
"""

import sys

sys.stdout.write("Guess a number (1-10): ")
sys.stdout.flush()
line = sys.stdin.readline()
try:
    guess = int(line.strip())
except ValueError:
    print("Not a number")
    sys.exit(3)
if not 1 <= guess <= 10:
    print("Out of range")
    sys.exit(2)
if guess == 7:
    print("Correct!")
    sys.exit(0)
print("Wrong, it was 7")
sys.exit(1)

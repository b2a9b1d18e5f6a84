"""Print the text of each page of a PDF (a stand-in: it only names the file)."""
import sys

for path in sys.argv[1:]:
    print(f"text of {path}")

import os
import sys

# The LSP tests share `harness.py`, next to them.
sys.path.append(os.path.dirname(os.path.abspath(__file__)))

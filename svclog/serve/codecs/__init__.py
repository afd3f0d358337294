"""Wire formats of the HTTP API: push bodies (push.py) and stream label strings (label_parser.py)."""

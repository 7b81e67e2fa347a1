"""What several test modules share: where the shared data is (data.py), the loopback
archive server (archive_server.py), hand-worked months (cases.py, month.py, hintdata.py),
decoding helpers (decode.py), published multi-month data (warehouse.py), headless Chromium (chromium.py) and
network namespaces (netns.py: the kernel tests and bench/multipath.py). Test modules import from here, never from each other."""

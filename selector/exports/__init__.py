"""Tunnel configuration export: the path selector's hints rendered for the tools operators
run (JSON Lines, a Linux MPTCP shell script, an MPT connection file).

Every value that reaches a script or a config file passes selector/exports/validate.py first; the
renderers never write a string they did not validate or compose themselves.
"""

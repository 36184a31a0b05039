"""The Textual front end: home, question/fix walk, browse, log triage, probes and help screens.

It drives `trainmedic.walk.WalkSession`; the engine never imports anything from here.
"""

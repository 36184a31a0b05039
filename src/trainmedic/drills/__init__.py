"""Incident drills: a real log from a public thread, walked by a trainee, then compared.

The cases are the public incident corpus (`tests/corpus/cases/`, shipped in the wheel as
`trainmedic/_drills/`): one real excerpt each, with its source, the expected `tree#node` and the
thread's resolution in our words. `cases` reads and chooses them, `expert` finds the trees' own
route to the expected node, `run` follows the trainee (answers, jumps, triage) and scores the
ending, `debrief` gathers what is shown at the end, `progress` keeps the scores in the state
folder. No Textual, no Rich: the app and `--plain` draw the same data.
"""

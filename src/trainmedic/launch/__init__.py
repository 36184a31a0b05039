"""Training launch scripts, read without running them.

`shell` interprets the static bash subset launch scripts are written in; `script` finds the
training command in the result and reads a pasted command or a script path. Memory estimates,
preflight and the memory probe all read launch scripts through here; this package knows nothing
of Megatron's flags (that is `trainmedic.memory`).
"""

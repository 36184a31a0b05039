"""Trees as runbooks (Markdown with Mermaid, Mermaid alone, JSON) and walks as incident reports.

Everything here is a pure function of the trees or of a saved walk: no clock, no terminal, so
the same input always gives the same bytes and the committed runbooks can be checked for drift.
"""

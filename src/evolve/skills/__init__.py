"""Skills (issue 13): compiled procedure lessons, selected per task, scored, retired.

skills-A owns this file (the write path); skills-B's modules are imported by module path:
`evolve.skills._select` (selection and injection) and `evolve.skills._scoreboard`.
"""

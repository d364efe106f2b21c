"""Other tools' recipes as cockpit recipes (pure: text in, a TOML table and a list of what was
left out): sparkrun's recipe YAML (v2, and v1, eugr's run-recipe format it migrates) and eugr's
launch scripts (`vllm serve …` lines, workers `--headless`, head last).

Nothing is dropped quietly: whatever the cockpit cannot represent is returned as (key, why) for
the CLI to print. Shell syntax in a command is refused, never passed on: the cockpit starts vLLM
with an argv whose every word it quotes, so a `$(…)` or `;` that worked in the other tool's shell
would arrive as a literal word, or worse, be trusted.

`sparkrun` and `eugr` read the two sources, `source` their text (YAML, command words,
placeholders), `vllm_flags` the `vllm serve` line, `recipe` writes the cockpit recipe. Nothing is
imported here: callers name the module that holds what they use.
"""

"""The Textual console. Nothing outside this package imports Textual (headless paths stay light).

Parts: `themes` (theme files → Textual themes + heatmap scale + state colours), `keymap` (the action
registry and user key remaps), `glyphs` (unicode / --ascii), and pure renderers returning Rich
`Text`: `heatmap`, `quota_bar`, `charts`.
"""

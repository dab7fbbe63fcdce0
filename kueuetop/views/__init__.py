"""Text renderings shared by the headless CLI and the console (no Textual imports here)."""

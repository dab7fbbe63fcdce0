"""Fuzzing of every parser of outside data (hypothesis): at least 10,000 inputs per parser per run,
no exception other than the parser's documented error, which must carry a clear message."""

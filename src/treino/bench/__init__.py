"""treino bench: measure a GPU server against its datasheet, and write a profile the planner can use."""

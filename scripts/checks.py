"""What the tree checks (check_layers.py, check_architecture.py) share: how they report."""


def report(problems, summary):
    """Prints one line per problem, then the summary line; the exit status: 1 when any."""
    for line in problems:
        print(line)
    print(summary)
    return 1 if problems else 0

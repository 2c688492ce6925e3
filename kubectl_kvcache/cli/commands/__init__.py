"""One module per command, all alike: NAME; HELP (help, description, examples); add(sub, commands)
registers its flags; options(ns) turns them into its validated Options (kubectl's Complete and
Validate); prefetch(options), when present, names the snapshot the command line loads ahead;
run(options, io) runs it (the flow in cli/flows/ is imported only then, after the connection
started); ENGINE_DATA, when present, says what --engine-data does for it (cli/app.py: NOTED by
default, QUIET, or None). A read command that takes --contexts names its flow (contexts.wrap),
and one with --policy its PolicyTerms. A new command is one such module and one line in
cli/app.py's COMMANDS; nothing else compares a command's name."""

from toolguard.cli import main

main()

from reposync.cli import run

run()

"""``python -m fairjudge`` runs the command line."""

from fairjudge._cli import main

raise SystemExit(main())

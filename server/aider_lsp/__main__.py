from .processes.process_start import drop_start_folder_from_path

drop_start_folder_from_path()  # before anything else is imported (process_start.py says why)

from .cli.main import main  # noqa: E402

raise SystemExit(main())

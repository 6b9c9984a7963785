"""The operator tools: the ``python -m hooks`` command line (``cli``, ``cli_format``), the scenario
folder format (``scenario``), replaying a folder offline (``replay``) and recording live calls as
folders (``record``, on in the server with ``NVCRE_RECORD_DIR``).
"""

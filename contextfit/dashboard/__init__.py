"""dashboard: the view models and charts the Streamlit pages draw (the pages themselves
are ``pages/``). Imports every layer below; never the command line.
"""

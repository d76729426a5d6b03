"""The web page: its views, forms and errors, in a headless browser too."""

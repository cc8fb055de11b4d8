enum ServerPlaceholder {}

"""Lance for lakecore: the table layer (manifests, fragments, deletion files, versions, tags)
implemented from the Lance format spec; pylance only encodes and decodes ``.lance`` data files."""

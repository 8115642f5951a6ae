"""Writing Lance datasets: lakecore writes the table layer, pylance encodes data files."""

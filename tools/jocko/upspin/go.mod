module upspin.io

go 1.12

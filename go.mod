module github.com/watermarkhq/watermark

go 1.26

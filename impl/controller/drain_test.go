package controller

// drain is Ready then Advance: a test's driver carries out each Ready at
// once (kafka.Handover).
func drain(c *Controller) Ready {
	rd := c.Ready()
	c.Advance()
	return rd
}

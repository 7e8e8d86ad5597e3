package sizer

// lastApplied returns the fields of the sizer's last apply in this process.
func (r *Reconciler) lastApplied(key string) fieldSet {
	f, _ := r.appliedRecord(key)
	return f
}

// appliedRecord returns the fields of the sizer's last apply in this process, and whether there was one.
func (r *Reconciler) appliedRecord(key string) (fieldSet, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.applied[key]
	return f, ok
}

// rememberApplied records the fields of the sizer's last apply.
func (r *Reconciler) rememberApplied(key string, fields fieldSet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		r.applied = map[string]fieldSet{}
	}
	r.applied[key] = fields
}

package v1alpha1

// Weekday is an English day name.
// +kubebuilder:validation:Enum=Monday;Tuesday;Wednesday;Thursday;Friday;Saturday;Sunday
type Weekday string

// MaintenanceWindow is a daily time range on some days of the week, in one time
// zone. A window whose end is not after its start wraps past midnight
// (start 22:00, end 02:00 runs until 02:00 the next day); start equal to end
// is a whole 24 hours. The window belongs to the day it starts on. Times are
// wall-clock times in timeZone: on a day when the clocks change, a start that
// does not exist (spring forward) opens at the first instant after the gap,
// and a time that occurs twice (fall back) means its first occurrence.
type MaintenanceWindow struct {
	// days the window opens on; empty means every day.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	Days []Weekday `json:"days,omitempty"`

	// start is the opening time, HH:MM on a 24-hour clock.
	// +required
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="self.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$')",message="start must be HH:MM on a 24-hour clock, e.g. 22:00"
	Start string `json:"start"`

	// end is the closing time, HH:MM on a 24-hour clock; see the type's
	// description for wrapping past midnight.
	// +required
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="self.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$')",message="end must be HH:MM on a 24-hour clock, e.g. 02:00"
	End string `json:"end"`

	// timeZone is an IANA time zone name such as Europe/Berlin; empty means UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$')",message="timeZone must be an IANA time zone name such as Europe/Berlin"
	TimeZone string `json:"timeZone,omitempty"`
}

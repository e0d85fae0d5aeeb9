"""The class: who is in it (`roster`), grading each student in worker processes (`gradebook`,
`workers`) into the output folder (`outfolder`), the feedback and gradebook (`report`) and the
LMS exports (`export`). Imports every wing below it, never the ways in."""

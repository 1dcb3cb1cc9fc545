package undo

// utimeOmit leaves a time as it is in utimensat(2) (sys/stat.h's -2;
// golang.org/x/sys/unix does not name it for darwin).
const utimeOmit = -2

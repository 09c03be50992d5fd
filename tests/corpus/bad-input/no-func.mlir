// ERROR: expected one func.func, found 0
module {
}

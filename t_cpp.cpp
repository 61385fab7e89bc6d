#include <deepreduce.h>
#include <cstdio>
int main() { std::printf("%s %s\n", dr_version_string(), dr_status_message(DR_E_CORRUPT)); return 0; }

// Placeholder entry point while the CLI lands (see helper/cli_*.cc).
#include <cstdio>

#include "stallscope_config.h"

int main() {
    std::printf("stallscope %s\n", STALLSCOPE_VERSION);
    return 0;
}

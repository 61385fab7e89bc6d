/* Status messages and the version string. */
#include "deepreduce.h"

#define DR_STR2(x) #x
#define DR_STR(x) DR_STR2(x)

const char *dr_version_string(void)
{
    return DR_STR(DR_VERSION_MAJOR) "." DR_STR(DR_VERSION_MINOR) "." DR_STR(DR_VERSION_PATCH);
}

const char *dr_status_message(int status)
{
    switch (status) {
    case DR_OK: return "success";
    case DR_E_ARG: return "invalid argument";
    case DR_E_DST_TOO_SMALL: return "destination buffer too small";
    case DR_E_FRAME_SHORT: return "frame truncated: buffer shorter than its header declares";
    case DR_E_FRAME_MAGIC: return "not a deepreduce frame: bad magic bytes";
    case DR_E_FRAME_VERSION: return "unsupported frame format version";
    case DR_E_FRAME_CHECKSUM: return "frame checksum mismatch: payload corrupted in transit";
    case DR_E_FRAME_FIELD: return "inconsistent frame header field or section length";
    case DR_E_FRAME_CODEC: return "frame carries a different codec than the decoder expects";
    case DR_E_CORRUPT: return "corrupt section contents";
    case DR_E_ZLIB: return "zlib error";
    case DR_E_NUMERIC: return "numeric failure (singular system or non-finite input)";
    default: return "unknown status code";
    }
}

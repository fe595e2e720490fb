// A JSON document written member by member to a sink, byte for byte what nlohmann's
// dump(indent, ' ', false, error_handler_t::replace) writes for the same document built whole. Each
// value passed in is small (one row, one reason) and dumped by nlohmann itself; only the containers
// around them are streamed. A job's summary at 16 000 nodes is ~110 MB of text and, as one document,
// several hundred MB of nodes: streamed, neither the document nor its text is ever held whole.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope {

using JsonSink = std::function<void(std::string_view piece)>;

class JsonStream {
  public:
    // indent < 0: compact, as dump(-1); else pretty, as dump(indent). Pieces reach `sink` in ~64 KiB
    // blocks, the last one at finish().
    JsonStream(JsonSink sink, int indent);
    JsonStream(const JsonStream&) = delete;
    JsonStream& operator=(const JsonStream&) = delete;

    // Containers: the top one without a key; inside an object with one, inside an array without.
    void open_object(std::string_view key = {});
    void open_array(std::string_view key = {});
    void close();  // the innermost open container

    void member(std::string_view key, const Json& value);  // inside an object
    void element(const Json& value);                       // inside an array

    void finish();  // flushes; every container must be closed

  private:
    struct Level {
        bool array, empty = true;
    };
    void start_entry(std::string_view key);
    void value(const Json& value);
    void put(std::string_view text);
    void put_indent(std::size_t levels);

    JsonSink sink_;
    const int indent_;
    std::vector<Level> levels_;
    std::string buffer_, scratch_;
};

}  // namespace stallscope

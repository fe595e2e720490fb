// FlatMap (model/flat_map.h) behaves as the std::map it replaced in Snapshot: same order, same answers
// for the calls the code makes, including the hinted inserts the sources and the JSON reader use.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <stdexcept>

#include "libstallscope/model/flat_map.h"
#include "libstallscope/model/snapshot.h"

using namespace stallscope;

namespace {

template <class A, class B>
bool same_entries(const A& a, const B& b) {
    if (a.size() != b.size()) return false;
    auto j = b.begin();
    for (const auto& [name, value] : a) {
        if (name != j->first || value != j->second) return false;
        ++j;
    }
    return true;
}

}  // namespace

TEST_CASE("FlatMap follows std::map through random inserts, assigns, hinted appends and erases") {
    std::mt19937 random(42);
    const char* names[] = {"port_xmit_data", "port_rcv_data", "Port",    "port", "", "symbol_error", "a",
                           "\xff\xfe",       "np_cnp_sent",   "rx_pause"};
    FlatMap<Counter> flat;
    std::map<std::string, Counter> tree;
    for (int step = 0; step < 5000; ++step) {
        const std::string name = names[random() % std::size(names)];
        const Counter value = random() % 4 == 0 ? Counter{} : Counter{random()};
        switch (random() % 7) {
            case 0:
                flat[name] = value, tree[name] = value;
                break;
            case 1:
                CHECK(flat.try_emplace(name, value).second == tree.try_emplace(name, value).second);
                break;
            case 2:
                CHECK(flat.insert_or_assign(name, value).second == tree.insert_or_assign(name, value).second);
                break;
            case 3:
                flat.insert_or_assign(flat.end(), name, value),
                    tree.insert_or_assign(tree.end(), name, value);
                break;
            case 4:
                flat.emplace_hint(flat.end(), name, value), tree.emplace_hint(tree.end(), name, value);
                break;
            case 5:
                CHECK(flat.erase(name) == tree.erase(name));
                break;
            default:
                CHECK(flat.count(name) == tree.count(name));
                CHECK(flat.contains(name) == (tree.find(name) != tree.end()));
                if (tree.count(name)) CHECK(flat.at(name) == tree.at(name));
        }
        REQUIRE(same_entries(flat, tree));  // byte order, as std::string's operator<
    }
}

TEST_CASE("FlatMap: an initializer list in any order is sorted, a repeated name keeps its first value") {
    const CounterMap m = {{"z", 1}, {"a", std::nullopt}, {"m", 3}, {"a", 9}};
    const std::map<std::string, Counter> expected = {{"z", 1}, {"a", std::nullopt}, {"m", 3}, {"a", 9}};
    CHECK(same_entries(m, expected));
    CHECK(m == CounterMap{{"a", std::nullopt}, {"m", 3}, {"z", 1}});
    CHECK_FALSE(m == CounterMap{{"a", 0}, {"m", 3}, {"z", 1}});  // null is not 0
    CHECK_THROWS_AS(m.at("nope"), std::out_of_range);
}
